"""polyzero.eval"""
