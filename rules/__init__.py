"""synclint's built-in rules: one module per rule, found without registration.

In a checkout this is the top-level `rules/` folder; in an installed wheel it is the
subpackage `synclint.rules`.
"""
