"""``envbisect completion``: a shell's completion script, made from the parser itself."""

from __future__ import annotations

from envbisect.cli.context import Context


def cmd_completion(ctx: Context) -> int:
    """A completion script from the parser itself. shtab rather than argcomplete: the script
    is static, so a TAB runs no Python (argcomplete starts envbisect on every TAB), and it
    needs no global activation step."""
    shell = ctx.args.shell
    if shell in ("fish", "powershell"):  # shtab makes neither: cli/completions.py does
        from envbisect.cli import completions

        print(getattr(completions, "fish" if shell == "fish" else "powershell")(ctx.parser), end="")
        return 0
    import shtab

    from envbisect.cli.completions import mark_paths

    mark_paths(ctx.parser)
    print(shtab.complete(ctx.parser, shell=shell))
    return 0
