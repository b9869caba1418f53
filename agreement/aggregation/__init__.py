"""Annotator models beyond majority vote: Dawid–Skene, MACE and GLAD (estimators.py), their
resolution policies (policies.py), fitting and storing them per stage (services.py) and their
section of the Agreement page (section.py, figures.py). See agreement/README.md or the main
README's policy table."""
