module Greet
  def greet = "Hello from #{name}"
end
class Animal
  include Greet
  attr_reader :name
  def initialize(name) = @name = name
  def speak = "..."
  def to_s = "#{self.class.name.downcase} #{name}"
end
class Dog < Animal
  def speak = "Woof"
end
class Puppy < Dog
  def speak = super + "!"
end
[Animal.new("a"), Dog.new("d"), Puppy.new("p")].each { |x| puts "#{x}: #{x.speak}; #{x.greet}" }
puts Puppy.ancestors.take(4).inspect
class Ghost
  def method_missing(m, *args) = m.to_s.start_with?("get_") ? m.to_s.sub("get_", "") : super
  def respond_to_missing?(m, priv = false) = m.to_s.start_with?("get_") || super
end
g = Ghost.new
puts g.get_name, g.respond_to?(:get_x), g.respond_to?(:other)
puts Dog.instance_method(:speak).owner, Puppy.superclass
o = Object.new
def o.single = "singleton"
puts o.single, o.singleton_methods.inspect
puts 5.frozen?, "lit".dup.frozen?, :upcase.to_proc.call("str")
