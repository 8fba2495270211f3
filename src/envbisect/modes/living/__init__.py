"""Living tables as a mode: running a matrix, publishing it, keeping it current.

matrix    running a compatibility matrix: every cell a real environment, probed for real
publish   its tables, pages, lockfiles and feed, from the store
update    ``matrix --update``: probing only what is new
matrixrun ``envbisect matrix`` as one mode: the cells run (whole or updated), run.json, publish
"""
