"""Front-ends: DSLs that hand their programs to the middle-end through the wire format."""
