"""Sphinx configuration of the bcolzx documentation.

Build with ``sphinx-build -W --keep-going -b html docs docs/_build/html``
(``pip install ".[docs]"`` first).  The API reference is generated from the
docstrings of the bcolzx that Python imports: this file never puts the source
tree on ``sys.path``, because a source tree has no compiled extensions (CI
installs the package and builds the documentation from it).
"""

from __future__ import annotations

import re

from docutils import nodes

import bcolzx

project = "bcolzx"
author = "The bcolzx developers"
copyright = "the bcolzx developers (BSD 3-Clause)"  # noqa: A001 - Sphinx's name
release = bcolzx.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints",
                    # the raw tables of a benchmark run (linked, not a page)
                    "benchmarks/tables.md", "benchmarks/tables-1e8.md"]

# -- MyST (the Markdown pages) ---------------------------------------------------------
# GitHub-style anchors, so that links such as ``migration.md#4-exceptions`` work both on
# GitHub and in the built site.
myst_heading_anchors = 3

# -- autodoc, autosummary, numpydoc ----------------------------------------------------
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autosummary_generate = False  # the reference pages are written by hand (docs/api/)
numpydoc_show_class_members = False  # members are listed by autodoc's :members:
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True



def _split_parameters(text: str) -> list[str]:
    """The top-level, comma-separated parameters of a signature's inside."""
    parts, depth, quote, current = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _public_signature(app, what, name, obj, options, signature, return_annotation):
    """Leave private parameters (``_v1``, ``_scope``...) out of displayed signatures."""
    if not signature or not signature.startswith("(") or not signature.endswith(")"):
        return None
    params = [p for p in _split_parameters(signature[1:-1])
              if not p.lstrip("*").startswith("_")]
    while params and params[-1] == "*":
        params.pop()
    text = re.sub(r"<class '([\w.]+)'>", r"\1", ", ".join(params))  # dtype=float
    return f"({text})", return_annotation


def _full_width_plots(app, doctree):
    """The benchmark pages' figures: the article's full width, each a link to its file.

    The pages keep plain Markdown images (they read the same on a code host); a width
    makes Sphinx wrap each image in a link to the full-size file (html_scaled_image_link).
    """
    if not app.env.docname.startswith("benchmarks/"):
        return
    for node in doctree.findall(nodes.image):
        node["width"] = "100%"
        node["classes"].append("bcolzx-plot")


def setup(app):
    app.connect("autodoc-process-signature", _public_signature)
    app.connect("doctree-read", _full_width_plots)


# -- HTML ------------------------------------------------------------------------------
# pydata-sphinx-theme (NumPy's, pandas' and Zarr's).  Every page of this site is a top-level
# entry of the index's toctrees, so the header gets one link per part of the site
# (_templates/navbar-sections.html) and the left sidebar the whole site
# (_templates/site-nav.html) instead of the theme's per-section navigation.
html_theme = "pydata_sphinx_theme"
html_title = f"bcolzx {release}"
html_short_title = "bcolzx"
html_static_path = ["_static"]
html_css_files = ["bcolzx.css"]
templates_path = ["_templates"]
html_sidebars = {
    "index": [],  # the index lists every page in its body
    "search": [],
    "genindex": [],
    "**": ["site-nav.html"],
}
html_theme_options = {
    "logo": {"text": "bcolzx"},
    "navbar_align": "left",
    "navbar_center": ["navbar-sections.html"],
    "navbar_end": ["theme-switcher"],
    "navbar_persistent": ["search-button"],
    "secondary_sidebar_items": {"**": ["page-toc", "sourcelink"], "index": []},
    "show_toc_level": 2,
    "show_prev_next": True,
    "footer_start": ["copyright", "bcolzx-version.html"],
    "footer_end": ["sphinx-version", "theme-version"],
}
