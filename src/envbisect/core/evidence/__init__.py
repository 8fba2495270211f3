"""Evidence from failure text and from the wheels themselves (``envbisect why``).

failure.py reads what a traceback names (a name that cannot be imported, a module not found,
a missing attribute, a call that no longer fits, a glibc symbol version); apisource.py judges
one module's source (is the name there, what does a function take, does the caller still do
it); importnames.py maps an import name to the distribution that ships it; boundaries.py
turns release histories into the answer and its fixes. Pure: text in, data out.
"""
