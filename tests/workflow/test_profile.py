"""The documents state what the workflow profile sets, from the profile itself (issue 28: the
README said 4 GB for the store job where profiles/default/config.yaml sets 6000 MB)."""

import re

import yaml
from snakerun import REPO


def test_the_documented_job_resources_are_the_profiles():
    resources = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())["set-resources"]
    text = " ".join((REPO / "docs/cluster.md").read_text().split())
    for rule, words in (
        ("store", "the store job (ingest, plan and pack)"),
        ("tile", "a tile job"),
        ("triples", "a ccc3 job"),  # issue 30: bounded whatever passes, at most 4 GB
    ):
        m = re.search(re.escape(words) + r" (\d+) MB and (\d+) min", text)
        assert m, f"docs/cluster.md no longer states {rule}'s resources as '{words} N MB and M min'"
        assert (int(m.group(1)), int(m.group(2))) == (resources[rule]["mem_mb"], resources[rule]["runtime"])
    # a ccc3 job holds a bounded number of passing triples, CPU or GPU (issue 30: at most 4 GB)
    assert resources["triples"]["mem_mb"] <= 4000
    # the README states no figure of its own: it points to the profile
    readme = (REPO / "README.md").read_text()
    assert "profiles/default/" in readme and not re.search(r"\d+ ?(GB|GiB|MB) and \d+ min", readme)
