"""The inputs stage: what a log is before anything is matched in it.

    names      what an input is called (log suffixes, directory bounds) and InputError
    sources    files, directories, stdin, compressed and remote inputs -> blocks of whole lines / Lines
    remote     URLs (s3://, gs://, http(s)://) read in blocks through fsspec
    digest     the content hash of the inputs, folded into the one read
    paste      the shapes pastes come in (a quote, gutter, indentation, entities taken off; hard wraps joined)
    text       one line's normalisation (ANSI, progress bars, control characters, clipping)
    launchers  the launcher table: rank prefixes and in-message rank forms, declared once
    ranks      every rank matcher (str and bytes), generated from the launcher table
"""
