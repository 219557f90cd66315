"""The SQL family's data side: the mutation engine and the family builder."""
