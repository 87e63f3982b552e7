"""The examples in the docstrings of genotile.core run and print what they show."""

import doctest
import importlib
import pkgutil

import pytest

import genotile.core

MODULES = sorted(m.name for m in pkgutil.iter_modules(genotile.core.__path__, "genotile.core."))
# modules whose public functions carry examples: each must keep at least one
WITH_EXAMPLES = (
    "genotile.core.bits",
    "genotile.core.ccc3",
    "genotile.core.encode",
    "genotile.core.genotype",
    "genotile.core.histogram",
    "genotile.core.metrics",
    "genotile.core.plan",
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed"
    if name in WITH_EXAMPLES:
        assert result.attempted > 0, f"{name} lost its docstring examples"


def test_a_wrong_example_fails():
    """doctest.testmod, as called above, does report an example whose output is wrong."""

    def wrong():
        """
        >>> 1 + 1
        3
        """

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(verbose=False)
    for test in finder.find(wrong, "wrong", globs={}):
        runner.run(test, out=lambda _text: None)
    assert runner.summarize(verbose=False).failed == 1
