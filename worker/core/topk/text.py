"""A short built-in English text for perplexity when a ``topk_eval`` spec names no file (our own words, so
the demo needs nothing from a hub; a real measurement names a corpus file such as WikiText-2's test split)."""

SAMPLE_TEXT = """\
A mixture-of-experts layer replaces one feed-forward block by several, called experts, and a small router
that chooses, for every token, which of them to run. The router scores all experts, keeps the best k, and
mixes their outputs with weights taken from its scores. Training fixes k, but nothing in the layer stops a
user from changing it afterwards: the same weights can be run with one expert per token, with two, or with
all of them. Running more experts costs more computation and often, though not always, gives a better
prediction; running fewer is cheaper and sometimes loses little. Some routers divide the kept weights by
their sum, so that they add up to one whatever k is; others keep the raw probabilities, so that adding an
expert also adds weight to the mixture. Comparing families of models across k therefore needs to know which
kind of router each one has.

Compositional reasoning asks a model to combine skills it has learnt separately into an answer it has never
seen: to apply two rules in a new order, to chain a lookup and a comparison, or to describe a topic while
using a figure of speech and a counterfactual at once. A model that activates more experts per token may
have more room to combine such skills, and the question of how the number of active experts changes the
result is an empirical one. Small synthetic tasks answer it cheaply, where large language models answer it
at a cost that only a few laboratories can pay.
"""
