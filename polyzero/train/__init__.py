"""polyzero.train"""
