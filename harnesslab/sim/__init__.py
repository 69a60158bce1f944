"""The world outside the harness: clock, world, tools, model service, fake model, filler."""
