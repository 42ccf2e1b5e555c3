package registry

// HoldsOf returns how many holds after failed reads c keeps, for the tests.
func HoldsOf(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.holds)
}
