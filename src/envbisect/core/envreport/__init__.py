"""Environment reports as people paste them, and the bug reports around them.

read       a pasted report (``pip freeze``, ``llamafactory-cli env``, ``transformers env``,
           ``collect_env``...) into rows and what it says of the machine
registry   each format of report: its name, its reader, whether it lists every package
facts      what a report says beyond its pins: Python, platform, CUDA, each mapped row
bugreport  a bug report in Markdown: its repro, the error it shows, its environment report
"""
