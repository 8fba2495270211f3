"""Living tables: compatibility matrices published from real runs and kept current.

spec      the ``matrices/*.toml`` schema, validated, and axis selection
cell      a published cell, typed (``from_dict`` validated, ``to_dict`` as written)
meta      results.json's ``matrix`` block; document: the whole results.json
lastrun   run.json: how the last run was made, and what an update did
grid      a table's sections, rows and columns, and the cell at each square
update    which cells of a published matrix are new, stay, leave, or are probed again
tables    the files people and machines read: table.md, heatmap.svg, results.csv
page      table.html and results/index.html
feed      Atom feeds of what changed
history   what changed between two publishes
findings  what a matrix found, in sentences
"""
