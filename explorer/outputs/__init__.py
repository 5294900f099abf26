"""What a model outputs, as plain functions a page or a notebook shows: a causal language model's next tokens,
surprisal and continuation (`causal_lm`), a masked LM's fillers (`masked_lm`), an encoder-decoder's generated text
(`seq2seq`), a classifier's class probabilities (`classifier`), an encoder's sentence embeddings (`embeddings`);
greedy generation that returns the attention of every step (`generate`), and the task dicts the importers attach
to a Hub model per kind of output head (`hub_tasks`)."""
