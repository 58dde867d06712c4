"""Analysis: ranking metrics, train/serve skew, judge monitoring and the frames the notebooks show."""
