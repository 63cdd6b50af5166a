"""The device model: where each value of a checked file lives (a CUDA tensor, a host tensor, a
host value, or unknown), how sure that is, and why.

The package is split one job per module; `synclint.devices.model` is the facade rules reach
through the rule API, and its docstring maps the rest. Import from the modules themselves:
this file imports nothing, so that the value lattice can be imported without the rest.
"""
