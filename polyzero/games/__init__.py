"""polyzero.games"""
