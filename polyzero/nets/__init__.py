"""polyzero.nets"""
