"""The static integrity rules, grouped by what they look at; rules.py assembles the registry."""
