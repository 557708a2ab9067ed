"""The glue between kbot's commands and a GitHub Actions job (`action.yml`, docs/action.md).

`kbot action prepare` picks one target of the scan's matrix for an optimize job and names its
store cache; `kbot action report` turns a command's JSON envelope into the step's outputs and
its job summary. Nothing here reads a token or runs a candidate.
"""
