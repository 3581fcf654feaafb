// LeapGrammar: JSON-schema constraints compiled to a grammar that masks token logits (issue 6).
