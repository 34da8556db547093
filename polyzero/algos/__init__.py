"""polyzero.algos"""
