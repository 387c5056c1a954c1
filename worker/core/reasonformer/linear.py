"""Linear layers that carry their own initialisation, so that HF's weight initialisation (which visits leaf
modules only, and would give every ``nn.Linear`` of a T5 model a N(0, initializer_factor) kernel) keeps
ours: ``ReasonFormerForConditionalGeneration._init_weights`` calls their ``reset_parameters``."""

from __future__ import annotations

from torch import nn


class FanInLinear(nn.Linear):
    """Kernel N(0, 1/fan_in) (LeCun normal, what T5 uses for its FFN input), bias zero."""

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, std=self.in_features**-0.5)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


class ZeroLinear(nn.Linear):
    """Kernel and bias zero: an adapter's up-projection, so a fresh adapter is the identity (DESIGN.md)."""

    def reset_parameters(self) -> None:
        nn.init.zeros_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)
