"""The three CF-World diagnostic probes: rule decoupling, attribute decoupling, de-nominalisation."""
