"""``envbisect check``: what is wrong with an environment, read from a bug report (or from this
machine), offline, each finding with its evidence and a command line that fixes it.

observed     what a report says that the checks read, each fact with its line: the packages,
             torch's build, the driver, the GPUs, the LLaMA-Factory stage, the error lines
finding      one finding: its kind, the report's lines it rests on, the fix, the command that
             proves it
releasepins  versions off a release's pins (LLaMA-Factory's, per stage; transformers', trl's...)
cudarules    torch's CUDA build against the driver, a CPU torch where GPUs are named, a torch
             build without the GPU's architecture
extensions   bitsandbytes' binaries and flash-attn's builds against torch and CUDA
published    the combinations the published tables measured failing
diagnosis    the shipped data read, every rule run, the typed answer (``Diagnosis``)
"""
