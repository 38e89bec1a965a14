"""Twitter URL paraphrases (Lan et al. 2017): harvest news tweets and the tweets sharing
their URLs (X API v2 or archived JSON), pair them, identify paraphrases."""
