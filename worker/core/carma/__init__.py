"""CARMA (paper 003): MI and layer-wise stability regularisation of any HF causal LM, its tasks (IDM, SC),
word spans from tokenizer offsets."""
