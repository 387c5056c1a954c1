"""SRAVEN: the symbolic Raven task (generator) and the transformer the SMoE paper trains on it."""
