"""What the ``carma`` kind's run is made of besides its own steps: data, layer ranges, training with the
best checkpoint kept, and the measurements after it. A subpackage of the family: the kinds are its modules."""
