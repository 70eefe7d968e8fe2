"""Text as the measures read it (`text`): the `default` tokenizer, folding, sentence splitting, names checked for
look-alikes, counted nouns."""
