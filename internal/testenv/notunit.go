//go:build !unit

package testenv

const startsUnderUnit = false
