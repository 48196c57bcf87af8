"""Wire models: frozen pydantic v2 models whose field names are the stable wire names."""
