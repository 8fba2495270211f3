"""The modes (run, by-date, diff, matrix, probe) and the loop and session they share."""
