"""Judge-prompt probes: canaries, section-order ablation, position swap, repeat noise."""
