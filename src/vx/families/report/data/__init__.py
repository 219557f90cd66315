"""The report family's data side: the rubric (locked reference), degradations, the family builder."""
