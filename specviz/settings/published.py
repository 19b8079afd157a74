"""Figures others published, each with its source, for the page to set beside what the loaded pair measured. Written
once here; nothing in specviz computes them."""

LEVIATHAN = "Leviathan, Kalman & Matias, Fast Inference from Transformers via Speculative Decoding (ICML 2023)"
# Their Table 3: the acceptance rate α measured for each draft/target pair and task, 0.53 to 0.89.
PUBLISHED_ALPHA = (0.53, 0.89)
PUBLISHED_EXAMPLES = (("T5-small drafting for T5-XXL (English–German translation)", 0.75),
                      ("LaMDA 8B drafting for LaMDA 137B (dialog)", 0.74))
PUBLISHED_SPEEDUP = "2 to 3 times faster"  # the original papers' wall-clock speedups (Leviathan et al.; Chen et al. 2023)
