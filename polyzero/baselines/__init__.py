"""polyzero.baselines: learners that are not polyzero algorithms (no `Algorithm`
plug-in, no search, no training runtime) but reference points the papers compare
against, e.g. TD(lambda) on Nannon (`td_lambda.py`, NDMZ paper Section 4.2).

Below `polyzero.algos` and beside `polyzero.replay`: a baseline builds on games and
nets only, so the algorithm layer imports no evaluation code to reach one.
"""
