package main

// registerGroups registers the consumer-group APIs (the group coordinator).
func registerGroups(b *broker) {}

// groupsLed is the number of consumer groups this broker coordinates.
func groupsLed(b *broker) int { return 0 }
