"""Plane shapes: areas, perimeters and centroids of polygons given as (x, y) vertices."""

from shapes.polygon import Polygon, centroid, perimeter, polygon_area, signed_area

__all__ = ["Polygon", "centroid", "perimeter", "polygon_area", "signed_area"]
