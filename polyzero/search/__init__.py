"""polyzero.search"""
