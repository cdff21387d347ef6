Point = Struct.new(:x, :y) do
  def +(o) = Point.new(x + o.x, y + o.y)
  def to_s = "(#{x}, #{y})"
end
a = Point.new(1, 2)
b = Point.new(3, 4)
puts a + b
puts a == Point.new(1, 2)
class Version
  include Comparable
  attr_reader :parts
  def initialize(s) = @parts = s.split(".").map(&:to_i)
  def <=>(o) = parts <=> o.parts
  def to_s = parts.join(".")
end
vs = %w[1.10.0 1.2.3 1.2.10 0.9].map { Version.new(_1) }
puts vs.sort.join(" < ")
puts vs.max, Version.new("2.0").between?(vs.min, vs.max)
