"""What the ``skillmix`` kind's run is made of besides its own steps: the chat models, their routing, the
running metrics and the cell's report. A subpackage of the family: the kinds are its modules."""
