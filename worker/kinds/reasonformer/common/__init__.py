"""What the kinds ``reasonformer_pretrain`` and ``reasonformer_finetune`` share: spec -> core objects,
data, the training loop's glue, evaluation, the result records and saving, one concept per module.

A subpackage of the family: the kinds are the family's modules, not what lies in its subpackages."""
