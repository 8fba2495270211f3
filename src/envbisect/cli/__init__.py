"""The command line: options declared once, the command table, the terminal display."""
