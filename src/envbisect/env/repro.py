"""Probe *policy*: what runs in a candidate environment, with which interpreter flags and
environment variables, in which working directory. The mechanism is ``runner.run_process``.

A ``Repro`` is one or more steps, run in order in one fresh working directory; the first step
that does not pass decides the environment's outcome (the environment fails if any fails):
    --repro FILE          ``<env python> -X faulthandler FILE``
    -- CMD ARGS...        the command, with the environment's bin directory first on PATH and
                          ``ENVBISECT_PYTHON`` set to its interpreter
    --probe NAME[:ARGS]   a built-in probe (``envbisect/probes/``), copied into the working
                          directory and run like a repro file

Every step runs with faulthandler on (every thread's Python stack on a fatal signal, and on
the SIGABRT sent at the timeout), in envbisect's environment without the interpreter variables
that change what runs or what it imports (``scrub.DROPPED``: PYTHONOPTIMIZE, PYTHONPATH, the
user site...), so that only the candidate environment is tested. What the user passes with
``--env NAME=VALUE`` (``user_env``) is set last, and is part of ``repro_id``: a probe with
``--env PYTHONOPTIMIZE=1`` is stored apart from one without.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import shlex
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from envbisect.env.runner import run_process
from envbisect.env.scrub import SET_FOR_PROBES, scrub
from envbisect.env.uv import BuiltEnv
from envbisect.errors import UsageError
from envbisect.model import RawProbe

# Bump when the way probes are run changes enough that stored outcomes should not be reused.
# 3: the scrub of interpreter variables (env/scrub.py). An outcome stored before it may have
# been made with PYTHONOPTIMIZE or PYTHONPATH leaking from the shell (an assert stripped, a
# shadowing module imported), invisibly: it must not answer for a scrubbed probe.
POLICY_VERSION = 3


class Arg(enum.Enum):
    """Whether a built-in probe takes ``:ARGS``."""

    NONE = "none"
    REQUIRED = "required"
    OPTIONAL = "optional"


@dataclass(frozen=True, slots=True, kw_only=True)
class Builtin:
    """A built-in probe: its script, its argument, what it does (for help and hints)."""

    script: str
    what: str
    arg: Arg = Arg.NONE
    metavar: str = ""  # how usage names the argument
    choices: tuple[str, ...] = ()  # when given, the only values the argument may take
    example: str = ""  # an argument to show in a hint
    support: tuple[str, ...] = ()  # more files of probes/ copied beside it (with _common.py)

    def usage(self, name: str) -> str:
        if self.arg is Arg.REQUIRED:
            return f"{name}:{self.metavar}"
        if self.arg is Arg.OPTIONAL:
            return f"{name}[:{self.metavar}]"
        return name


BUILTINS: dict[str, Builtin] = {
    "import": Builtin(
        script="import_probe.py",
        arg=Arg.REQUIRED,
        metavar="PKG[,PKG...]",
        example="datasets,pyarrow",
        what="import the packages",
    ),
    "datasets-json": Builtin(
        script="datasets_json.py",
        what="load_dataset('json') on alpaca/sharegpt data, index, map with num_proc 1 and 2",
    ),
    "lora-step": Builtin(
        script="lora_step.py",
        what="a few LoRA steps on a tiny Llama (CUDA bf16 when available, else CPU)",
    ),
    "llamafactory": Builtin(
        script="llamafactory_import.py",
        what="import llamafactory (llmtuner before 0.8), its run_exp and its CLI's main",
    ),
    "llamafactory-train": Builtin(
        script="llamafactory_train.py",
        arg=Arg.OPTIONAL,
        metavar="STAGE",
        # The first is the default. ppo trains a LoRA reward model (rm) first.
        choices=("sft", "pt", "rm", "dpo", "kto", "ppo"),
        example="ppo",
        what="a real LLaMA-Factory train run: a few LoRA steps of STAGE (default sft), "
        "tiny local model and data",
    ),
    "sft-step": Builtin(
        script="sft_step.py",
        arg=Arg.OPTIONAL,
        metavar="lora",
        choices=("full", "lora"),  # the first is the default: the whole model trained
        example="lora",
        support=("_tinytrain.py",),
        what="three steps of trl's SFTTrainer on a tiny Llama (lora: a peft adapter), "
        "logged and saved, the arguments of the installed trl's era",
    ),
    "dpo-step": Builtin(
        script="dpo_step.py",
        arg=Arg.OPTIONAL,
        metavar="lora",
        choices=("full", "lora"),
        example="lora",
        support=("_tinytrain.py",),
        what="three steps of trl's DPOTrainer on a tiny Llama (lora: a peft adapter, the "
        "reference the adapter disabled), logged and saved",
    ),
    "trainer-step": Builtin(
        script="trainer_step.py",
        arg=Arg.OPTIONAL,
        metavar="resume|lora|lora-resume",
        choices=("save", "resume", "lora", "lora-resume"),
        example="resume",
        support=("_tinytrain.py",),
        what="transformers' Trainer over accelerate on a tiny Llama: gradient accumulation, "
        "logging every step, a checkpoint and a save (resume: from the checkpoint; lora: peft; "
        "lora-resume: both)",
    ),
}


def probe_usage() -> str:
    """Every built-in probe as ``--probe`` takes it, for help texts and hints."""
    return ", ".join(b.usage(name) for name, b in BUILTINS.items())


# Environment variables for built-in probes: never reach a hub, keep caches per probe.
_BUILTIN_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
_DATASETS_PACKAGES = {"datasets", "pyarrow"}
_TRAINING_PACKAGES = {"torch", "transformers", "peft", "accelerate", "trl"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One thing to run: a Python file (with arguments) or a command line."""

    label: str
    file: Path | None = None
    args: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    support: tuple[Path, ...] = ()  # files copied into the working directory first
    builtin: bool = False
    digest: str = ""  # changes when what runs changes


@dataclass(frozen=True, slots=True, kw_only=True)
class Repro:
    """The user's minimal repro and/or built-in probes, as ordered steps."""

    steps: tuple[Step, ...]
    origin: Path = Path(".")  # the directory envbisect was started from
    extra_env: tuple[tuple[str, str], ...] = field(default=())  # envbisect's own, per mode
    user_env: tuple[tuple[str, str], ...] = field(default=())  # --env NAME=VALUE, set last

    # -- building ------------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str, origin: Path) -> Repro:
        return cls(steps=(file_step(path, origin),), origin=origin)

    @classmethod
    def build(
        cls,
        *,
        origin: Path,
        repro_file: str | None = None,
        command: Sequence[str] = (),
        probes: Sequence[str] = (),
        default_for: str | None = None,
        extra_env: Mapping[str, str] | None = None,
        user_env: Mapping[str, str] | None = None,
    ) -> Repro:
        """Steps from the CLI's flags; with none given, the default probes for a package.

        ``extra_env``: variables a mode sets (DISABLE_VERSION_CHECK); ``user_env``: the
        user's ``--env``, set after them and after the scrub, so any of them can be
        overridden on purpose."""
        if repro_file and command:
            raise UsageError(
                "both --repro and a command after -- were given",
                hint="use one: --repro FILE, or -- CMD ARGS... (--probe may go with either)",
                ref="repro-twice",
            )
        steps = [builtin_step(p) for p in probes]
        if repro_file:
            steps.append(file_step(repro_file, origin))
        if command:
            steps.append(command_step(list(command), origin))
        if not steps and default_for:
            steps = [builtin_step(p) for p in default_probes(default_for)]
        if not steps:
            raise UsageError(
                "no repro given",
                hint="pass --repro FILE, --probe NAME, or a command after -- "
                "(e.g. -- python -c 'import datasets')",
                ref="repro-missing",
            )
        return cls(
            steps=tuple(steps),
            origin=origin,
            extra_env=tuple(sorted((extra_env or {}).items())),
            user_env=tuple(sorted((user_env or {}).items())),
        )

    # -- identity ------------------------------------------------------------------------------

    @property
    def repro_id(self) -> str:
        """Changes when what runs changes, so an edited repro is probed afresh; the variables
        set for it (``extra_env`` and ``--env``) are part of what runs. The store's key is
        (env_id, repro_id): a probe with ``--env PYTHONOPTIMIZE=1`` never answers for one
        without, nor the other way round."""
        blob = {
            "policy": POLICY_VERSION,
            "steps": [[s.label, s.digest, list(s.args), list(s.argv)] for s in self.steps],
            "env": sorted({**dict(self.extra_env), **dict(self.user_env)}.items()),
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        return " && ".join(s.label for s in self.steps)

    # -- running -------------------------------------------------------------------------------

    def environment(self, env: BuiltEnv, base: Mapping[str, str], step: Step) -> dict[str, str]:
        """The variables of one step (and of its re-run under gdb): ``base`` scrubbed, then
        envbisect's own, then ``--env``'s."""
        out = scrub(base)
        out["PATH"] = os.pathsep.join([str(env.bin_dir), base.get("PATH", os.defpath)])
        out["VIRTUAL_ENV"] = str(env.path)
        out["ENVBISECT_PYTHON"] = str(env.python)
        out["ENVBISECT_ORIGIN"] = str(self.origin)
        out.update(SET_FOR_PROBES)
        if step.builtin:
            out.update(_BUILTIN_ENV)
        out.update(dict(self.extra_env))
        out.update(dict(self.user_env))
        return out

    def command(self, env: BuiltEnv, step: Step, workdir: Path) -> list[str]:
        if step.file is not None:
            return [str(env.python), "-X", "faulthandler", str(step.file), *step.args]
        return list(step.argv)

    def run(
        self,
        env: BuiltEnv,
        *,
        workdir: Path,
        timeout: float,
        run: int = 0,
        repeat: int = 1,
        devices: Mapping[str, str] | None = None,
    ) -> RawProbe:
        """Run every step (one deadline for all); the first one that does not pass is
        returned, else the last one, with every step's stdout tail kept. ``run`` of
        ``repeat`` (``--repeat``) reaches the steps as ENVBISECT_RUN and ENVBISECT_REPEAT;
        ``devices`` (CUDA_VISIBLE_DEVICES: the GPUs this probe was given) are set for them
        too, and are not part of what the repro is."""
        counters = {
            "ENVBISECT_RUN": str(run),
            "ENVBISECT_REPEAT": str(repeat),
            **(devices or {}),
        }
        workdir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        outputs: list[str] = []
        raw = RawProbe(returncode=0, timed_out=False, seconds=0.0)
        total = 0.0
        for step in self.steps:
            raw = self._run_step(
                env, step, workdir, max(0.1, deadline - time.monotonic()), counters
            )
            total += raw.seconds
            if len(self.steps) > 1:
                outputs.append(f"== {step.label} ==\n{raw.stdout_tail}")
            else:
                outputs.append(raw.stdout_tail)
            if raw.returncode != 0 or raw.timed_out:
                break
        return RawProbe(
            returncode=raw.returncode,
            timed_out=raw.timed_out,
            seconds=total,
            stdout_tail="\n".join(outputs),
            stderr_tail=raw.stderr_tail,
            step=raw.step,
        )

    def _run_step(
        self,
        env: BuiltEnv,
        step: Step,
        workdir: Path,
        timeout: float,
        counters: Mapping[str, str],
    ) -> RawProbe:
        for src in step.support:
            shutil.copyfile(src, workdir / src.name)
        argv = self.command(env, step, workdir)
        penv = {**self.environment(env, os.environ, step), **counters}
        if step.file is None and os.sep not in argv[0]:
            # Look the program up on the probe's PATH (the venv first), not envbisect's.
            found = shutil.which(argv[0], path=penv["PATH"])
            if found is None:
                return RawProbe(
                    returncode=127,
                    timed_out=False,
                    seconds=0.0,
                    stderr_tail=f"envbisect: command not found: {argv[0]}",
                    step=step.label,
                )
            argv[0] = found
        raw = run_process(argv, cwd=workdir, env=penv, timeout=timeout, stop_signal=signal.SIGABRT)
        return RawProbe(
            returncode=raw.returncode,
            timed_out=raw.timed_out,
            seconds=raw.seconds,
            stdout_tail=raw.stdout_tail,
            stderr_tail=raw.stderr_tail,
            step=step.label,
        )

    def steps_for_rerun(self, failing: str) -> Step | None:
        """The step with that label (forensics re-runs only the step that crashed)."""
        for s in self.steps:
            if s.label == failing:
                return s
        return None


# -- steps ------------------------------------------------------------------------------------


def file_step(path: str, origin: Path) -> Step:
    p = (origin / path).resolve()
    if not p.is_file():
        raise UsageError(
            f"the repro file {path} does not exist",
            hint="pass --repro PATH to a Python file, or give a command after --",
            ref="repro-missing",
        )
    return Step(label=f"python -X faulthandler {p}", file=p, digest=_digest(p))


def command_step(argv: list[str], origin: Path) -> Step:
    if not argv:
        raise UsageError(
            "no repro given",
            hint="pass --repro FILE, or a command after -- (e.g. -- python -c 'import datasets')",
            ref="repro-missing",
        )
    # Each probe runs in its own directory: file arguments relative to where envbisect was
    # started are made absolute, so that "-- python repro.py" still finds repro.py; their
    # content is part of the repro's identity.
    files: dict[int, Path] = {}
    for i, arg in enumerate(argv[1:], 1):
        if arg.startswith("-") or os.path.isabs(arg):
            continue
        p = origin / arg
        if p.is_file():
            files[i] = p.resolve()
    resolved = tuple(str(files[i]) if i in files else a for i, a in enumerate(argv))
    digest = hashlib.sha256(
        json.dumps({a: _digest(p) for a, p in files.items()}, sort_keys=True).encode()
    ).hexdigest()
    return Step(label=shlex.join(argv), argv=resolved, digest=digest)


def builtin_step(spec: str) -> Step:
    """The step of ``--probe NAME[:ARGS]``; a name or an argument it cannot take is a usage
    error here, in envbisect's own process, never an untestable probe."""
    name, _, arg = spec.partition(":")
    probe = BUILTINS.get(name)
    if probe is None:
        raise UsageError(
            f"no built-in probe named {name!r}",
            hint=f"the probes are: {probe_usage()}",
            ref="unknown-probe",
        )
    usage = probe.usage(name)
    if probe.arg is Arg.REQUIRED and not arg:
        raise UsageError(
            f"--probe {name} needs an argument",
            hint=f"--probe {usage}, e.g. --probe {name}:{probe.example}",
            ref="probe-argument",
        )
    if probe.arg is Arg.NONE and arg:
        raise UsageError(
            f"--probe {name} takes no argument (got {arg!r})",
            hint=f"--probe {name}",
            ref="probe-argument",
        )
    if arg and probe.choices and arg not in probe.choices:
        raise UsageError(
            f"--probe {name}: no {probe.metavar} named {arg!r}",
            hint=f"--probe {usage}, {probe.metavar} one of: {', '.join(probe.choices)}",
            ref="probe-argument",
        )
    if probe.choices and arg == probe.choices[0]:
        arg = ""  # the default, named: the same probe as without it, stored once
    script = probe.script
    folder = resources.files("envbisect.env.probes")
    paths = tuple(Path(str(folder / f)) for f in (script, "_common.py", *probe.support))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()
    return Step(
        label=f"{name}:{arg}" if arg else name,
        file=Path(script),  # relative: copied into the working directory, run from there
        args=(arg,) if arg else (),
        support=paths,
        builtin=True,
        digest=digest,
    )


def default_probes(package: str) -> list[str]:
    """What ``envbisect run --package P`` probes when no repro is given."""
    from packaging.utils import canonicalize_name

    key = canonicalize_name(package)
    probes = [f"import:{key}"]
    if key in _DATASETS_PACKAGES:
        probes.append("datasets-json")
    if key in _TRAINING_PACKAGES:
        probes.append("lora-step")
    return probes


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
