"""The licences a project's releases may carry, as SPDX identifiers (https://spdx.org/licenses/)
with their names: the ones datasets are commonly published under. The setup page offers these;
``studio.services.project_publication_set`` accepts nothing else (or "" for none stated)."""

from __future__ import annotations

#: (SPDX identifier, name), in the order the setup page lists them.
LICENCES: tuple[tuple[str, str], ...] = (
    ("CC-BY-4.0", "Creative Commons Attribution 4.0"),
    ("CC-BY-SA-4.0", "Creative Commons Attribution Share Alike 4.0"),
    ("CC-BY-NC-4.0", "Creative Commons Attribution Non Commercial 4.0"),
    ("CC-BY-NC-SA-4.0", "Creative Commons Attribution Non Commercial Share Alike 4.0"),
    ("CC-BY-ND-4.0", "Creative Commons Attribution No Derivatives 4.0"),
    ("CC0-1.0", "Creative Commons Zero 1.0 (public domain)"),
    ("ODC-By-1.0", "Open Data Commons Attribution License 1.0"),
    ("ODbL-1.0", "Open Data Commons Open Database License 1.0"),
    ("PDDL-1.0", "Open Data Commons Public Domain Dedication and License 1.0"),
    ("CDLA-Permissive-2.0", "Community Data License Agreement Permissive 2.0"),
    ("CDLA-Sharing-1.0", "Community Data License Agreement Sharing 1.0"),
    ("MIT", "MIT License"),
    ("Apache-2.0", "Apache License 2.0"),
)

LICENCE_IDS = frozenset(identifier for identifier, _ in LICENCES)
