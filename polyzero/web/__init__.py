"""The web page of `polyzero serve`: play, watch and analyse games, browse runs (docs/web.md).

Plain HTML, JavaScript and CSS shipped in `static/` (no build step); the server is
`polyzero.web.app.create_app`.
"""
