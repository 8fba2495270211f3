"""Completion scripts shtab does not make: fish and PowerShell, from the parser itself; and
which arguments take a path (their option records say so), for every shell (``mark_paths`` tells
shtab).

Static, as shtab's are (a TAB runs no Python): each subcommand with its help, each of its
options with its help, the values of an option with choices, and files where an option or a
positional argument takes a path (``envbisect check r1<TAB>`` completes as ``cat r1<TAB>``
does). What the parser says is untrusted text only in the sense that it must stay inside a
quoted string of the target shell: every help text is quoted for it here.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from envbisect.optionspec import Completes


def mark_paths(parser: argparse.ArgumentParser) -> None:
    """Each argument that takes a path, marked for shtab (``action.complete``): files, or
    folders for a DIR; subcommands' too."""
    import shtab

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                mark_paths(sub)
        elif action.nargs != 0 and not action.choices and _is_path(action):
            dirs = _path_kind(action) is Completes.DIR
            action.complete = shtab.DIRECTORY if dirs else shtab.FILE  # type: ignore[attr-defined]


def fish(parser: argparse.ArgumentParser, prog: str = "envbisect") -> str:
    """``complete -c envbisect ...`` lines: subcommands first, then each one's options."""
    lines = [f"# fish completion for {prog} (envbisect completion fish)", f"complete -c {prog} -f"]
    subs = list(_subcommands(parser))
    names = " ".join(name for name, _ in subs)
    for name, sub in subs:
        lines.append(
            f"complete -c {prog} -n 'not __fish_seen_subcommand_from {names}' -a {name} "
            f"-d {_fish_quote(_first(sub.description or ''))}"
        )
    for name, sub in subs:
        cond = f"-n '__fish_seen_subcommand_from {name}'"
        if any(not a.option_strings and _is_path(a) for a in sub._actions):
            # its positional argument is a path: files again, after the global -f
            lines.append(f"complete -c {prog} {cond} -F")
        for action in sub._actions:
            for flag in action.option_strings:
                kind = "-l " + flag[2:] if flag.startswith("--") else "-s " + flag[1:]
                extra = ""
                if action.choices:
                    extra = " -x -a " + _fish_quote(" ".join(map(str, action.choices)))
                elif action.nargs != 0 and _is_path(action):
                    extra = " -r -F"
                elif action.nargs != 0:
                    extra = " -x"
                lines.append(
                    f"complete -c {prog} {cond} {kind}{extra} -d {_fish_quote(_help(action))}"
                )
    return "\n".join(lines) + "\n"


def powershell(parser: argparse.ArgumentParser, prog: str = "envbisect") -> str:
    """``Register-ArgumentCompleter -Native``: the subcommand at the first word, then its
    options (and an option's choices after it)."""
    subs = list(_subcommands(parser))
    table = []
    for name, sub in subs:
        flags = []
        for action in sub._actions:
            for flag in action.option_strings:
                choices = " ".join(map(str, action.choices or ()))
                flags.append(f"@({_ps_quote(flag)}, {_ps_quote(choices)})")
        table.append(f"    {_ps_quote(name)} = @({', '.join(flags)})")
    body = "\n".join(table)
    return f"""# PowerShell completion for {prog} (envbisect completion powershell)
Register-ArgumentCompleter -Native -CommandName {prog} -ScriptBlock {{
  param($wordToComplete, $commandAst, $cursorPosition)
  $options = @{{
{body}
  }}
  $words = @($commandAst.CommandElements | ForEach-Object {{ $_.ToString() }})
  $sub = if ($words.Count -gt 1) {{ $words[1] }} else {{ '' }}
  if ($words.Count -le 2 -and -not $options.ContainsKey($sub)) {{
    $options.Keys | Where-Object {{ $_ -like "$wordToComplete*" }} | Sort-Object |
      ForEach-Object {{ [System.Management.Automation.CompletionResult]::new($_) }}
    return
  }}
  $previous = if ($words.Count -ge 2) {{ $words[-1] }} else {{ '' }}
  if ($wordToComplete -ne '' -and $words.Count -ge 3) {{ $previous = $words[-2] }}
  foreach ($pair in $options[$sub]) {{
    if ($pair[0] -eq $previous -and $pair[1] -ne '') {{
      $pair[1].Split(' ') | Where-Object {{ $_ -like "$wordToComplete*" }} |
        ForEach-Object {{ [System.Management.Automation.CompletionResult]::new($_) }}
      return
    }}
  }}
  $options[$sub] | ForEach-Object {{ $_[0] }} | Where-Object {{ $_ -like "$wordToComplete*" }} |
    ForEach-Object {{ [System.Management.Automation.CompletionResult]::new($_) }}
}}
"""


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _path_kind(action: argparse.Action) -> Completes | None:
    """What the option's record says its value is (cli/parser.py marks the action)."""
    kind = vars(action).get("path_kind")
    return kind if isinstance(kind, Completes) else None


def _is_path(action: argparse.Action) -> bool:
    return _path_kind(action) is not None


def _help(action: argparse.Action) -> str:
    return _first(str(action.help or "")) if action.help != argparse.SUPPRESS else ""


def _first(text: str) -> str:
    """The first sentence, on one line, short enough for a completion menu."""
    one = " ".join(text.split())
    for stop in (". ", "; "):
        if stop in one:
            one = one.split(stop, 1)[0]
    return one[:80]


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ps_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
