#!/usr/bin/env python3
"""Prints SQL for a small Sakila-shaped sample database, for `make demo` when
../shared/fixtures/sakila is not present. Deterministic (fixed seed). Creates the tables
that scripts/demo-load.sql touches: actor, category, film, customer, payment, language,
film_actor, rental."""
import random

random.seed(5401)
print("CREATE DATABASE sakila CHARACTER SET utf8mb4; USE sakila;")
print("""
CREATE TABLE language (language_id TINYINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name CHAR(20) NOT NULL, last_update TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP);
CREATE TABLE actor (actor_id SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  first_name VARCHAR(45) NOT NULL, last_name VARCHAR(45) NOT NULL,
  last_update TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP);
CREATE TABLE category (category_id TINYINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(25) NOT NULL, last_update TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP);
CREATE TABLE film (film_id SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  title VARCHAR(128) NOT NULL, description TEXT, release_year YEAR,
  language_id TINYINT UNSIGNED NOT NULL, rental_rate DECIMAL(4,2) NOT NULL DEFAULT 4.99,
  rating ENUM('G','PG','PG-13','R','NC-17') DEFAULT 'G',
  special_features SET('Trailers','Commentaries','Deleted Scenes','Behind the Scenes'),
  last_update TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP);
CREATE TABLE film_actor (actor_id SMALLINT UNSIGNED NOT NULL, film_id SMALLINT UNSIGNED NOT NULL,
  last_update TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (actor_id, film_id));
CREATE TABLE customer (customer_id SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  first_name VARCHAR(45) NOT NULL, last_name VARCHAR(45) NOT NULL, email VARCHAR(50),
  active TINYINT(1) NOT NULL DEFAULT 1, create_date DATETIME NOT NULL);
CREATE TABLE rental (rental_id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, rental_date DATETIME NOT NULL,
  customer_id SMALLINT UNSIGNED NOT NULL, return_date DATETIME);
CREATE TABLE payment (payment_id SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id SMALLINT UNSIGNED NOT NULL, rental_id INT, amount DECIMAL(5,2) NOT NULL,
  payment_date DATETIME NOT NULL);
""")
words = ["ACADEMY", "DINOSAUR", "ACE", "GOLDFINGER", "ADAPTATION", "HOLES", "AFFAIR", "PREJUDICE",
         "AGENT", "TRUMAN", "AIRPLANE", "SIERRA", "ALABAMA", "DEVIL", "ALADDIN", "CALENDAR"]
names = ["PENELOPE", "NICK", "ED", "JENNIFER", "JOHNNY", "BETTE", "GRACE", "MATTHEW", "JOE", "CHRISTIAN"]
print("INSERT INTO language (name) VALUES ('English'),('Italian'),('Japanese'),('Mandarin'),('French'),('German');")
print("INSERT INTO category (name) VALUES " + ",".join(f"('{w.title()}')" for w in words[:16]) + ";")
print("INSERT INTO actor (first_name, last_name) VALUES " + ",".join(
    f"('{random.choice(names)}','{random.choice(words)}')" for _ in range(200)) + ";")
ratings = ["G", "PG", "PG-13", "R", "NC-17"]
feats = ["Trailers", "Commentaries", "Deleted Scenes", "Behind the Scenes"]
rows = []
for i in range(1000):
    sf = ",".join(f for f in feats if random.random() < 0.4)
    rows.append(f"('{random.choice(words)} {random.choice(words)}','A story of {random.choice(words).lower()}',"
                f"2006,1,{random.choice(['0.99','2.99','4.99'])},'{random.choice(ratings)}','{sf}')")
print("INSERT INTO film (title, description, release_year, language_id, rental_rate, rating, special_features) VALUES "
      + ",".join(rows) + ";")
pairs = sorted({(random.randint(1, 200), random.randint(1, 1000)) for _ in range(5000)})
print("INSERT INTO film_actor (actor_id, film_id) VALUES " + ",".join(f"({a},{f})" for a, f in pairs) + ";")
print("INSERT INTO customer (first_name, last_name, email, active, create_date) VALUES " + ",".join(
    f"('{random.choice(names)}','{random.choice(words)}','c{i}@example.org',1,'2006-02-14 22:04:36')"
    for i in range(599)) + ";")
for start in range(0, 16000, 4000):
    print("INSERT INTO rental (rental_date, customer_id, return_date) VALUES " + ",".join(
        f"('2005-{random.randint(5,8):02d}-{random.randint(1,28):02d} 12:{random.randint(0,59):02d}:00',"
        f"{random.randint(1,599)},NULL)" for _ in range(4000)) + ";")
    print("INSERT INTO payment (customer_id, rental_id, amount, payment_date) VALUES " + ",".join(
        f"({random.randint(1,599)},{start+j+1},{random.choice(['0.99','2.99','4.99','9.99'])},"
        f"'2005-06-{random.randint(1,28):02d} 10:00:00')" for j in range(4000)) + ";")
