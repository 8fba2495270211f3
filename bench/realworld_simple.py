"""The one-failure cases of the real-world suite: an API removed or changed in one release of
one package (alone, or under an app pinned with ``--with``), by version and by date.

Every range was widened to what a user would give: each end at least 8 releases or 3 months
(upload time) from the truth, never the truth itself; each proposed end was installed with
plain uv and the repro run in it (good ends pass, bad ends fail like the first bad release).
"""

from __future__ import annotations

from realworld_cases import Case, fail, py

CASES: tuple[Case, ...] = (
    Case(
        name="numpy2-float_",
        kind="API removal",
        mode="run",
        package="numpy",
        truth="2.0.0",
        failure=fail(
            "AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64`"
            " instead."
        ),
        python="3.11",
        args=("--package", "numpy", "--good", "1.24.0", "--bad", "2.2.6"),
        repro=py("import numpy as np; np.float_"),
        source="https://numpy.org/doc/stable/release/2.0.0-notes.html",
        verified="1.24.0 and 1.26.4 pass; 2.0.0 and 2.2.6: AttributeError: `np.float_` was"
        " removed in the NumPy 2.0 release",
        ends="1.24.0 (2022-12-18) is 12 releases before 2.0.0, 2.2.6 (2025-05-17) 14 after",
    ),
    Case(
        name="numpy124-bool-alias",
        kind="API removal",
        mode="run",
        package="numpy",
        truth="1.24.0",
        failure=fail("AttributeError: module 'numpy' has no attribute 'bool'."),
        python="3.11",
        args=("--package", "numpy", "--good", "1.23.2", "--bad", "1.26.4"),
        repro=py("import numpy as np; np.bool"),
        source="https://numpy.org/doc/stable/release/1.24.0-notes.html",
        verified="1.23.2 and 1.23.5 pass (DeprecationWarning); 1.24.0 and 1.26.4:"
        " AttributeError: module 'numpy' has no attribute 'bool'",
        ends="1.23.2 (2022-08-14, the first numpy with cp311 wheels) is 4 months before 1.24.0;"
        " 1.26.4 (2024-02-05) 10 releases after",
    ),
    Case(
        name="numpy2-abi-pandas",
        kind="ABI break (transitive)",
        mode="run",
        package="numpy",
        truth="2.0.0",
        failure=fail(
            "ValueError: numpy.dtype size changed, may indicate binary incompatibility."
            " Expected 96 from C header, got 88 from PyObject"
        ),
        python="3.11",
        args=(
            "--package",
            "numpy",
            "--with",
            "pandas==2.0.3",
            "--good",
            "1.25.0",
            "--bad",
            "2.2.6",
        ),
        repro=py("import pandas"),
        source="https://pandas.pydata.org/docs/whatsnew/v2.2.2.html",
        verified="pandas 2.0.3 (no numpy cap) + numpy 1.25.0 and 1.26.4 import; + numpy 2.0.0"
        " and 2.2.6: ValueError: numpy.dtype size changed, may indicate binary incompatibility",
        ends="1.25.0 (2023-06-17) is 8 releases before 2.0.0, 2.2.6 (2025-05-17) 14 after",
    ),
    Case(
        name="pandas2-append",
        kind="API removal",
        mode="run",
        package="pandas",
        truth="2.0.0",
        failure=fail("AttributeError: 'DataFrame' object has no attribute 'append'"),
        python="3.11",
        args=("--package", "pandas", "--with", "numpy<2", "--good", "1.5.0", "--bad", "2.1.4"),
        repro=py("import pandas as pd; pd.DataFrame().append({'a': 1}, ignore_index=True)"),
        source="https://pandas.pydata.org/docs/whatsnew/v2.0.0.html",
        verified="1.5.0 and 1.5.3 pass (FutureWarning); 2.0.0 and 2.1.4: AttributeError:"
        " 'DataFrame' object has no attribute 'append'",
        ends="1.5.0 (2022-09-19, the first pandas with cp311 wheels) is 6.5 months before"
        " 2.0.0; 2.1.4 (2023-12-08) 8 releases after",
    ),
    Case(
        name="sqlalchemy2-execute",
        kind="API removal",
        mode="run",
        package="sqlalchemy",
        truth="2.0.0",
        failure=fail("AttributeError: 'Engine' object has no attribute 'execute'"),
        python="3.11",
        args=("--package", "sqlalchemy", "--good", "1.4.40", "--bad", "2.0.20"),
        repro=py("import sqlalchemy as sa; sa.create_engine('sqlite://').execute('select 1')"),
        source="https://docs.sqlalchemy.org/en/20/changelog/migration_20.html",
        verified="1.4.40 and 1.4.54 (the newest 1.4, just below 2.0.0 in version order) pass"
        " (RemovedIn20Warning); 2.0.0 and 2.0.20: AttributeError: 'Engine' object has no"
        " attribute 'execute'",
        ends="1.4.40 (2022-08-08) is 14 releases below 2.0.0 in version order; 2.0.20"
        " (2023-08-15) 20 releases after",
    ),
    Case(
        name="werkzeug3-flask222",
        kind="two-package (app pinned)",
        mode="run",
        package="werkzeug",
        truth="3.0.0",
        failure=fail(
            "ImportError: cannot import name 'url_quote' from 'werkzeug.urls'"
            " (.../site-packages/werkzeug/urls.py)"
        ),
        python="3.11",
        args=(
            "--package",
            "werkzeug",
            "--with",
            "flask==2.2.2",
            "--good",
            "2.2.2",
            "--bad",
            "3.0.6",
        ),
        repro=py("import flask"),
        source="https://github.com/pallets/werkzeug/issues/2789",
        verified="flask 2.2.2 + werkzeug 2.2.2, 2.3.7 and 2.3.8 (2.3.8 came out after 3.0.0,"
        " below it in version order) import; + 3.0.0 and 3.0.6: ImportError: cannot import"
        " name 'url_quote' from 'werkzeug.urls'",
        ends="2.2.2 (2022-08-08, the lowest flask 2.2.2 allows) is 10 releases below 3.0.0;"
        " 3.0.6 (2024-10-25) 13 months after",
    ),
    Case(
        name="werkzeug21-safe_str_cmp",
        kind="API removal",
        mode="run",
        package="werkzeug",
        truth="2.1.0",
        failure=fail(
            "ImportError: cannot import name 'safe_str_cmp' from 'werkzeug.security'"
            " (.../site-packages/werkzeug/security.py)"
        ),
        python="3.11",
        args=("--package", "werkzeug", "--good", "2.0.0", "--bad", "2.2.3"),
        repro=py("from werkzeug.security import safe_str_cmp"),
        source="https://werkzeug.palletsprojects.com/en/stable/changes/#version-2-1-0",
        verified="2.0.0 and 2.0.3 pass; 2.1.0 and 2.2.3: ImportError: cannot import name"
        " 'safe_str_cmp' from 'werkzeug.security'",
        ends="2.0.0 (2021-05-11) is 10 months before 2.1.0; 2.2.3 (2023-02-14) 11 months after",
    ),
    Case(
        name="click81-black",
        kind="transitive (app pinned)",
        mode="run",
        package="click",
        truth="8.1.0",
        failure=fail(
            "ImportError: cannot import name '_unicodefun' from 'click'"
            " (.../site-packages/click/__init__.py)"
        ),
        python="3.10",
        args=("--package", "click", "--with", "black==22.1.0", "--good", "8.0.0", "--bad", "8.1.7"),
        repro=("black", "--version"),
        source="https://github.com/psf/black/issues/2964",
        verified="black 22.1.0 + click 8.0.0 and 8.0.4: `black --version` prints; + click 8.1.0"
        " and 8.1.7: ImportError: cannot import name '_unicodefun' from 'click'",
        ends="8.0.0 (2021-05-11, the lowest black 22.1.0 allows) is 10 months before 8.1.0;"
        " 8.1.7 (2023-08-17) 17 months after",
    ),
    Case(
        name="by-date-black-click",
        kind="transitive, by date",
        mode="by-date",
        package="click",
        truth="8.1.0",
        failure=fail(
            "ImportError: cannot import name '_unicodefun' from 'click'"
            " (.../site-packages/click/__init__.py)"
        ),
        python="3.10",
        args=("--with", "black==22.1.0", "--good", "2022-01-30", "--bad", "2022-07-01"),
        repro=("black", "--version"),
        source="https://github.com/psf/black/issues/2964",
        verified="as click81-black; --exclude-newer 2022-01-30: black 22.1.0 prints its"
        " version; 2022-07-01 and today: the _unicodefun ImportError; click 8.1.0 was uploaded"
        " 2022-03-28",
        ends="the project's pins: --good is the day after black 22.1.0's own upload"
        " (2022-01-29T20:37:49Z; no environment with the pin exists earlier, so no earlier good"
        " date does), 2 months before click 8.1.0; --bad 2022-07-01, 3 months after",
        uploaded="2022-03-28T17:37:48Z",
    ),
    Case(
        name="by-date-jinja2-markupsafe",
        kind="transitive, by date",
        mode="by-date",
        package="markupsafe",
        truth="2.1.0",
        failure=fail(
            "ImportError: cannot import name 'soft_unicode' from 'markupsafe'"
            " (.../site-packages/markupsafe/__init__.py)"
        ),
        python="3.10",
        args=("--with", "jinja2==2.11.3", "--good", "2021-06-01", "--bad", "2022-06-01"),
        repro=py("import jinja2"),
        source="https://github.com/pallets/jinja/issues/1596",
        verified="jinja2 2.11.3 + markupsafe 2.0.1 imports (and as of 2021-02-01, jinja2"
        " 2.11.3's upload day); + markupsafe 2.1.0, and as of 2022-06-01 and today: ImportError:"
        " cannot import name 'soft_unicode' from 'markupsafe'",
        ends="--good 2021-06-01 is 8.5 months before markupsafe 2.1.0's upload (2022-02-18),"
        " --bad 2022-06-01 3.5 months after",
        uploaded="2022-02-18T03:49:49Z",
    ),
    Case(
        name="importlib-metadata5-get",
        kind="API removal",
        mode="run",
        package="importlib-metadata",
        truth="5.0.0",
        failure=fail("AttributeError: 'EntryPoints' object has no attribute 'get'"),
        python="3.11",
        args=("--package", "importlib-metadata", "--good", "4.6.0", "--bad", "6.8.0"),
        repro=py("import importlib_metadata as m; m.entry_points().get('console_scripts', [])"),
        source="https://github.com/python/importlib_metadata/issues/409",
        verified="4.6.0 and 4.13.0 pass (DeprecationWarning); 5.0.0 and 6.8.0: AttributeError:"
        " 'EntryPoints' object has no attribute 'get'",
        ends="4.6.0 (2021-06) is 16 months before 5.0.0; 6.8.0 (2023-07-07) 18 releases after",
    ),
    Case(
        name="urllib3-2-method_whitelist",
        kind="API removal (first bad releases yanked)",
        mode="run",
        package="urllib3",
        truth="2.0.2",
        failure=fail(
            "TypeError: Retry.__init__() got an unexpected keyword argument 'method_whitelist'"
        ),
        python="3.11",
        args=("--package", "urllib3", "--good", "1.26.0", "--bad", "2.2.3"),
        repro=py("from urllib3.util.retry import Retry; Retry(method_whitelist=['GET'])"),
        source="https://urllib3.readthedocs.io/en/stable/changelog.html",
        verified="1.26.0, 1.26.15 and 1.26.20 (the newest 1.26, below 2.0.0 in version order)"
        " pass (DeprecationWarning); 2.0.0 and 2.2.3: TypeError: Retry.__init__() got an"
        " unexpected keyword argument 'method_whitelist'. 2.0.0 and 2.0.1 are yanked on PyPI"
        " (truncated streamed bodies), so a bisection over the releases a user can get names"
        " 2.0.2 and lists 2.0.0, 2.0.1 as yanked between",
        ends="1.26.0 (2020-11-10) is 20 releases below 2.0.0; 2.2.3 (2024-09-12) 16 months after",
        yanked=("2.0.0", "2.0.1"),
    ),
    Case(
        name="pyyaml6-load-loader",
        kind="signature change",
        mode="run",
        package="pyyaml",
        truth="6.0",
        failure=fail("TypeError: load() missing 1 required positional argument: 'Loader'"),
        python="3.9",
        args=("--package", "pyyaml", "--good", "5.4.1", "--bad", "6.0.1"),
        repro=py("import yaml; yaml.load('a: 1')"),
        source="https://github.com/yaml/pyyaml/pull/561",
        verified="5.4 and 5.4.1 pass (YAMLLoadWarning); 6.0, 6.0.1 and 6.0.2: TypeError: load()"
        " missing 1 required positional argument: 'Loader'",
        ends="5.4.1 (2021-01-20) is 9 months before 6.0 (2021-10-13), 6.0.1 (2023-07-18) 21"
        " months after",
    ),
    Case(
        name="jinja2-31-Markup",
        kind="API removal",
        mode="run",
        package="jinja2",
        truth="3.1.0",
        failure=fail(
            "ImportError: cannot import name 'Markup' from 'jinja2'"
            " (.../site-packages/jinja2/__init__.py)"
        ),
        python="3.11",
        args=("--package", "jinja2", "--good", "3.0.0", "--bad", "3.1.4"),
        repro=py("from jinja2 import Markup"),
        source="https://jinja.palletsprojects.com/en/stable/changes/#version-3-1-0",
        verified="3.0.0 and 3.0.3 pass; 3.1.0 and 3.1.4: ImportError: cannot import name"
        " 'Markup' from 'jinja2'",
        ends="3.0.0 (2021-05-11) is 10 months before 3.1.0; 3.1.4 (2024-05-05) 2 years after",
    ),
    Case(
        name="itsdangerous21-json",
        kind="API removal",
        mode="run",
        package="itsdangerous",
        truth="2.1.0",
        failure=fail(
            "ImportError: cannot import name 'json' from 'itsdangerous'"
            " (.../site-packages/itsdangerous/__init__.py)"
        ),
        python="3.11",
        args=("--package", "itsdangerous", "--good", "1.1.0", "--bad", "2.2.0"),
        repro=py("from itsdangerous import json"),
        source="https://itsdangerous.palletsprojects.com/en/stable/changes/#version-2-1-0",
        verified="1.1.0 and 2.0.1 pass; 2.1.0 and 2.2.0: ImportError: cannot import name 'json'"
        " from 'itsdangerous'",
        ends="1.1.0 (2018-10-27) is 3 years before 2.1.0; 2.2.0 (2024-04-16) 2 years after",
    ),
    Case(
        name="networkx3-to_numpy_matrix",
        kind="API removal",
        mode="run",
        package="networkx",
        truth="3.0",
        failure=fail("AttributeError: module 'networkx' has no attribute 'to_numpy_matrix'"),
        python="3.11",
        args=("--package", "networkx", "--good", "2.8", "--bad", "3.2.1"),
        repro=py("import networkx as nx; nx.to_numpy_matrix"),
        source="https://networkx.org/documentation/stable/release/release_3.0.html",
        verified="2.8 and 2.8.8 pass; 3.0 and 3.2.1: AttributeError: module 'networkx' has no"
        " attribute 'to_numpy_matrix'",
        ends="2.8 (2022-04-09) is 8 releases before 3.0; 3.2.1 (2023-10-28) 10 months after",
    ),
    Case(
        name="scipy114-simps",
        kind="API removal (binary wheel)",
        mode="run",
        package="scipy",
        truth="1.14.0",
        failure=fail(
            "ImportError: cannot import name 'simps' from 'scipy.integrate'"
            " (.../site-packages/scipy/integrate/__init__.py)"
        ),
        python="3.11",
        args=("--package", "scipy", "--good", "1.10.0", "--bad", "1.15.2"),
        repro=py("from scipy.integrate import simps"),
        source="https://docs.scipy.org/doc/scipy/release/1.14.0-notes.html",
        verified="1.10.0 (with numpy 1.26.4) and 1.13.1 pass; 1.14.0 and 1.15.2: ImportError:"
        " cannot import name 'simps' from 'scipy.integrate'",
        ends="1.10.0 (2023-01-03) is 9 releases before 1.14.0; 1.15.2 (2025-02-17) 8 months after",
    ),
    Case(
        name="pyarrow21-datasets",
        kind="transitive (app pinned)",
        mode="run",
        package="pyarrow",
        truth="21.0.0",
        failure=fail("AttributeError: module 'pyarrow' has no attribute 'PyExtensionType'"),
        python="3.11",
        args=(
            "--package",
            "pyarrow",
            "--with",
            "datasets==2.14.6",
            "--with",
            "numpy<2",
            "--good",
            "19.0.0",
            "--bad",
            "22.0.0",
        ),
        repro=py("import datasets"),
        source="https://arrow.apache.org/release/21.0.0.html",
        verified="datasets 2.14.6 + numpy<2 + pyarrow 19.0.0 and 20.0.0 import; + pyarrow"
        " 21.0.0 and 22.0.0: AttributeError: module 'pyarrow' has no attribute"
        " 'PyExtensionType'",
        ends="19.0.0 (2025-01-16) is 6 months before 21.0.0 (2025-07-18); 22.0.0 (2025-10-24)"
        " 3.2 months after (no higher with numpy<2: pyarrow >= 23 needs NumPy 2)",
    ),
)
