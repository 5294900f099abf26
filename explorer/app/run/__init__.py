"""One Run of the page: from its typed request to the result its tabs draw.

    request        RunRequest: the session, sentences, toggles, view
    inputs         text -> ids and readable labels (a TextCodec per model)
    toggles        masks and head switches -> what the model is called with
    model_run      one model run -> a typed Run (attention, masks, outputs)
    pair           the baseline and the toggled run (Comparison)
    result         a Comparison reduced to what each tab draws (Analysis)
    output_table   what the model produced, baseline vs toggled
    request_memory what one Run needs in memory, and the gate that bounds the Runs at once
    view           which attention the figures show (View)
    figures        the figures a Run draws, declared by the tabs (RunFigure, RunFigures.of(tabs))
    chosen_head    the chosen head's reduction and heatmap (the Attention and All heads tabs draw it)
    role_labels    the All heads tiles' role labels, from the Run's attention; the roles a stack scores
    readings       typed text -> the sequences the analysis tabs read (a sequence model with its own answer)
    ...            the Run's attention read for figures (attention_maps), its outputs (sentence_outputs,
                   output_chips, state_line, sampled, returned)
"""
