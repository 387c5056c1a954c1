"""What the two ReasonFormer kinds' specs share: the skill lists, the model, training and analysis blocks
and the result records ``reasonformer_eval`` and ``routing``, one concept per module.

A subpackage of the family, so the registry does not read it as a kind (it reads a family's modules,
not its subpackages)."""
