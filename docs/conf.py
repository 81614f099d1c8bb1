"""Sphinx configuration of the qmatch_sklearn documentation.

Build with ``docs/build.sh`` (or ``python -m sphinx -W -b html docs docs/_build/html``).
The gallery runs every script in ``examples/``; ``QMATCH_DOCS_FAST=1`` (the
default of ``docs/build.sh``) makes them pretrain for a few epochs only.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))  # qmatch_docs: benchmark includes, gallery order

# sphinx-gallery captures stderr too, where each refresh of a progress bar
# (``verbose=1``) would add a copy of the bar to the page: show the first and
# the last state only.
os.environ.setdefault("TQDM_MININTERVAL", "3600")

import qmatch_sklearn

project = "qmatch_sklearn"
author = "the qmatch_sklearn developers"
copyright = "the qmatch_sklearn developers, BSD-3-Clause"
release = qmatch_sklearn.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "qmatch_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build", "_templates", "_ext", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"
]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

# -- API reference ----------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": True}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

# -- HTML -------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"qmatch_sklearn {release}"
html_static_path = []
html_copy_source = False  # the benchmark pages' sources are only include markers
html_theme_options = {
    "description": "Q-Match and its baselines as scikit-learn estimators",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}

# -- Gallery ----------------------------------------------------------------
# Every script in examples/ runs (they are named for what they show, not
# plot_*). The Adult example needs the data files; when they are absent it is
# shown without being run, as the script itself would only print that it skips.
_data_home = Path(os.environ.get("QMATCH_DATA") or ROOT / ".." / "shared" / "data")
_run_pattern = r"/[^/]+\.py$"
if not (_data_home / "adult" / "adult.data.gz").exists():
    print(f"qmatch_sklearn docs: no Adult files under {_data_home}; "
          "adult_mixed_types.py is shown without being run.")
    _run_pattern = r"/(?!adult_mixed_types)[^/]+\.py$"

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": _run_pattern,
    "within_subsection_order": "qmatch_docs.ExampleOrder",
    "download_all_examples": False,
    "remove_config_comments": True,
    "reset_modules": ("matplotlib",),
    "min_reported_time": 1,
    "show_memory": False,
    "show_signature": False,
    "doc_module": (),
}
