"""Every mode's answer, typed and frozen: its text lines, its report.md section, its ``--json``.

parts      what every answer is made of: status, rows, breakpoints, moves
search     a bisection's answer (``run``)
bydate     ``run --by-date``'s answer
diff       ``diff``'s culprits
lock       ``lock``'s newest passing environment and its constraints
commits    a commit search's answer
reproduce  ``repro``'s answer: did a bug report's failure happen here
"""
